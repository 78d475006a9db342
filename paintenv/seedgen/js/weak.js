// The two weak styles that are not the full sketch with other constants: near_empty (one
// small mark, maybe a leaf) and scribbly (blobs of one size in a ring). Each opens setup()
// with sketch.js's `setup` section between its constants and its painting.
// `$name` marks a value the generator fills in.
// Each section runs from its `//@ name` line to the next one.

//@ near-empty-constants
// $subject, just a hint of it: a small bud of colour.

const PAPER = "$paper"; // $paper_name
const PETAL = "$petal";
const LEAF = "$leaf";

//@ near-empty-bud
  // one small bud
  brush.fill(PETAL, 200);
  brush.fillBleed($bleed);
  brush.fillTexture($grain, $rim);
  brush.circle($x, $y, $radius, $wobble);

//@ near-empty-leaf
  // and a single leaf
  brush.fill(LEAF, 190);
  brush.beginShape(0.8);
  brush.vertex($base_x, $base_y);
  brush.vertex($left_x, $left_y);
  brush.vertex($tip_x, $tip_y);
  brush.vertex($right_x, $right_y);
  brush.endShape(true);

//@ scribbly-constants
// $subject: a ring of round petals round a round centre.

const PAPER = "$paper"; // $paper_name
const PETAL = "$petal";
const CENTRE = "$centre";
const LEAF = "$leaf";
const CX = $cx;
const CY = $cy;
const PETAL_COUNT = $count;
const RING = $ring; // distance of each petal from the centre
const BLOB = $blob; // every mark has this radius
const WOBBLE = $wobble;

//@ scribbly-blobs
  // leaves: two blobs below
  brush.fill(LEAF, $leaf_opacity);
  brush.fillBleed($leaf_bleed);
  brush.circle(CX - BLOB * 1.6, CY + RING + BLOB, BLOB, WOBBLE);
  brush.circle(CX + BLOB * 1.6, CY + RING + BLOB, BLOB, WOBBLE);

  // petals: the same blob again and again round the centre
  brush.fill(PETAL, $petal_opacity);
  for (let i = 0; i < PETAL_COUNT; i++) {
    const a = (TWO_PI * i) / PETAL_COUNT;
    brush.circle(CX + cos(a) * RING, CY + sin(a) * RING, BLOB, WOBBLE);
  }

  // the centre
  brush.fill(CENTRE, $centre_opacity);
  brush.circle(CX, CY, BLOB, WOBBLE);
