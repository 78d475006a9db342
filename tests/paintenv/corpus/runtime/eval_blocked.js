// eval is refused by the page's Content-Security-Policy (no 'unsafe-eval').
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  eval("rect(0, 0, 100, 100)");
}
