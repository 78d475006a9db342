// The frame every full seed sketch shares: its constants, the opening of setup(), and the
// heavy washes of the overfilled style. `$name` marks a value the generator fills in.
// Each section runs from its `//@ name` line to the next one.

//@ colours
const PAPER = "$paper"; // $paper_name
// one wash per petal colour, light to deep
const PETALS = $petals;
const CENTRE = "$centre";
const DOTS = "$dots";

//@ family-colour
const $name = "$colour"; // $note

//@ leaves
const LEAVES = $leaves; // deep to light
const STEM = "$stem";

//@ ground
const GROUND = "$ground"; // a $ground_name wash behind the flower

//@ paint
// how the paint behaves
const OPACITY = $opacity;
const BLEED = $bleed; // how far a wash spreads past its outline
const GRAIN = $grain; // paper texture
const RIM = $rim; // darker pigment at the edge of a wash
const CURVE = $curve; // 0 = straight edges, 1 = round
const WOBBLE = $wobble; // scribble of round marks

//@ geometry
// the shape of one bloom

//@ constant
const $name = $value;

//@ noted-constant
const $name = $value; // $note

//@ setup
function setup() {
  createCanvas(600, 600, WEBGL);
  background(PAPER);
  translate(-width / 2, -height / 2); // (0, 0) is now the top-left corner
  randomSeed($js_seed);
  noiseSeed($js_seed);
  brush.scaleBrushes(3);
  brush.noStroke();

//@ cover
// washes for the whole sheet
const COVER = $cover;

//@ cover-under
  // wash the whole sheet edge to edge in heavy overlapping bands of colour
  for (let i = 0; i < $count; i++) {
    const y = i * $band;
    wash(COVER[i % COVER.length], OPACITY, BLEED);
    brush.beginShape(CURVE);
    brush.vertex(-40, y - 60 + random(-20, 20));
    brush.vertex(640, y - 60 + random(-20, 20));
    brush.vertex(640, y + $band + random(-20, 20));
    brush.vertex(-40, y + $band + random(-20, 20));
    brush.endShape(true);
  }

//@ cover-over
  // and more heavy washes over the top
  for (let i = 0; i < $count; i++) {
    wash(COVER[i % COVER.length], OPACITY, BLEED);
    brush.circle(random(100, 500), random(100, 500), random(150, 220), WOBBLE);
  }
