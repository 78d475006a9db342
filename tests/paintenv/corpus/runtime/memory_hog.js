// Eats memory until the page dies.
function setup() {
  createCanvas(600, 600, WEBGL);
  const hoard = [];
  for (;;) hoard.push(new Array(1e6).fill(Math.random()));
}
