// Instance mode: a second p5 whose methods the gate cannot see.
new p5((p) => {
  p.setup = () => {
    p.createCanvas(600, 600, p.WEBGL);
    p.rect(10, 10, 100, 100);
    brush.fill("#ff0000", 200);
    brush.circle(300, 300, 50, 0.2);
  };
});
