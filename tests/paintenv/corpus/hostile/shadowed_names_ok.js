// Locals, parameters, fields and methods named like p5 primitives, text functions or
// window properties. None of them reaches p5's globals, so this must pass.
class Petal {
  constructor(angle) {
    this.angle = angle;
    this.line = { from: 0, to: 1 };
  }
  circle(x, y) {
    brush.circle(x, y, 12, 0.2);
  }
  paint() {
    this.circle(300 + cos(this.angle) * 80, 300 + sin(this.angle) * 80);
    return this.line.to;
  }
}

const helpers = {
  text(label) {
    return label.length;
  },
};

function Leaf(x) {
  this.point = { x: x, y: 420 };
  this.top = 380;
}

function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  translate(-width / 2, -height / 2);
  brush.scaleBrushes(3);
  brush.noStroke();
  const top = 120;
  const self = { name: "hibiscus" };
  let parent = null;
  const point = { x: 300, y: top + 180 };
  const lines = [[1, 2], [3, 4]];
  for (const line of lines) {
    parent = line;
  }
  const text = "a title that is never drawn";
  helpers.text(text + self.name);
  const leaf = new Leaf(point.x);
  brush.fill("#e0857a", 180);
  brush.fillBleed(0.3);
  for (let i = 0; i < 5; i++) {
    new Petal((TWO_PI * i) / 5).paint();
  }
  brush.fill("#5f8f4e", 170);
  brush.beginShape(0.6);
  brush.vertex(leaf.point.x, leaf.point.y);
  brush.vertex(leaf.point.x + 60, leaf.top);
  brush.vertex(leaf.point.x + 90, leaf.point.y + 30);
  brush.endShape(true);
  return parent;
}
