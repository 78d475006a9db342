// Forbidden names in comments and strings only: must pass.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  translate(-width / 2, -height / 2);
  brush.scaleBrushes(3);
  brush.noStroke();
  brush.fill("#e0857a", 180);
  brush.fillBleed(0.3);
  brush.beginShape(0.8);
  brush.vertex(300, 300);
  brush.vertex(420, 260);
  brush.vertex(380, 400);
  brush.endShape(true);
  brush.circle(300, 300, 40, 0.3);
  // rect(0, 0, 10, 10); text("no"); fetch("/x"); eval("1")
  /* ellipse(1, 2, 3); document.write("x"); loadImage("a.png");
     window["re" + "ct"](); brush.set("HB", "#000", 1); */
  const notes = ["rect(1, 2)", 'text("hi")', "fetch('/x')", "window.location"];
  const label = `ellipse(${notes.length}) and line() and metadata: none`;
  const point = { x: 300, y: 300 }; // a local named like a primitive, only read
  brush.circle(point.x, point.y, 12, 0.2);
}
