// Bare primitives reached through computed names and aliases, which a static gate
// cannot see.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  translate(-width / 2, -height / 2);
  window["re" + "ct"](10, 10, 50, 50);
  const shape = globalThis["elli" + "pse"];
  shape(300, 300, 80, 80);
  [1, 2].forEach((i) => window["li" + "ne"](0, i * 10, 600, i * 10));
  Reflect.apply(window["tri" + "angle"], null, [0, 0, 50, 0, 25, 40]);
}
