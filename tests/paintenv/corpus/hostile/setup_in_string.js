// setup and createCanvas exist only inside a string and a comment.
// function setup() { createCanvas(600, 600, WEBGL); }
const fake = "function setup() { createCanvas(600, 600, WEBGL); brush.fill('#fff', 200); brush.circle(1, 1, 1, 1); }";
