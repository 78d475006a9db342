// Only draw(): nothing calls setup, and there is no canvas either.
function draw() {
  brush.fill("#e0857a", 180);
  brush.circle(300, 300, 40, 0.3);
}
