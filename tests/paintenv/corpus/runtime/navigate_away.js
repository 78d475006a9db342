// Tries to replace the page; the navigation is refused and the painting goes on.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  location.href = "/elsewhere";
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#5f8f4e", 170);
  brush.circle(300, 300, 120, 0.2);
}
