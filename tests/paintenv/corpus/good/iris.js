// A blue iris drawn as data: every shape is a list of points, painted in layers.
// Arrow functions, destructuring, const/let and a draw() with noLoop().
const SHAPES = [
  // [colour, opacity, bleed, curvature, points]
  ["#55803f", 170, 0.2, 0.4, [[292, 600], [300, 330], [312, 600]]],
  ["#6f9a52", 160, 0.25, 0.6, [[250, 600], [210, 380], [270, 560]]],
  ["#7fae5f", 160, 0.25, 0.6, [[350, 600], [395, 400], [330, 570]]],
  ["#2f3f8f", 165, 0.35, 0.8, [[300, 300], [200, 330], [190, 420], [280, 360]]],
  ["#2f3f8f", 165, 0.35, 0.8, [[300, 300], [400, 330], [410, 420], [320, 360]]],
  ["#3d52a8", 170, 0.3, 0.8, [[300, 300], [290, 180], [300, 110], [315, 185]]],
  ["#4a62bd", 160, 0.3, 0.85, [[300, 290], [230, 200], [250, 140], [300, 230]]],
  ["#4a62bd", 160, 0.3, 0.85, [[300, 290], [370, 200], [350, 140], [300, 230]]],
  ["#6c7fd6", 155, 0.2, 0.85, [[300, 305], [225, 340], [235, 395], [290, 345]]],
  ["#6c7fd6", 155, 0.2, 0.85, [[300, 305], [375, 340], [365, 395], [310, 345]]],
  ["#e8c14a", 200, 0.1, 0.7, [[300, 310], [255, 335], [262, 345], [300, 322]]],
  ["#e8c14a", 200, 0.1, 0.7, [[300, 310], [345, 335], [338, 345], [300, 322]]],
];

function paintShape([colour, opacity, bleed, curvature, points]) {
  brush.fill(colour, opacity);
  brush.fillBleed(bleed);
  brush.fillTexture(0.5, 0.4);
  brush.beginShape(curvature);
  points.forEach(([x, y]) => brush.vertex(x, y));
  brush.endShape(true);
}

function setup() {
  createCanvas(600, 600, WEBGL);
  background("#f4f1ea");
  brush.scaleBrushes(3);
  brush.noStroke();
}

function draw() {
  translate(-width / 2, -height / 2);
  // each shape twice: a wide pale wash, then the shape itself
  for (const shape of SHAPES) {
    const [colour, opacity, bleed, curvature, points] = shape;
    paintShape([colour, opacity - 10, bleed + 0.1, curvature, points.map(([x, y]) => [x + 4, y + 3])]);
    paintShape(shape);
  }
  brush.noFill();
  brush.fill("#1f2a66", 190);
  brush.circle(300, 300, 8, 0.2);
  noLoop();
}
