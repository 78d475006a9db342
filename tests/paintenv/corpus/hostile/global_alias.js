// The window object itself, aliased or handed to reflection.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  translate(-width / 2, -height / 2);
  brush.fill("#e0857a", 180);
  brush.circle(300, 300, 40, 0.3);
  const w = window;
  w.fetch("/x");
  Reflect.get(globalThis, "fetch");
  const names = Object.getOwnPropertyNames(self);
  this["fetch"]("/y");
}
