// What setup() paints after the paper, layer by layer in painting order: a ground, pads,
// stems or a branch, leaves, a bud, then the blooms. scene.py picks the layers and their
// numbers; `$name` marks a value it fills in.
// Each section runs from its `//@ name` line to the next one.

//@ ground
  // a pale ground laid wet behind the flower so light petals read against it
  wash(GROUND, $opacity, min(BLEED * 1.5, 0.6));

//@ ground-circle
  brush.circle($x, $y, $radius, WOBBLE);

//@ pads-round-bloom
  // lily pads floating round the flower

//@ pads-on-water
  // lily pads on the water

//@ pad
  wash(LEAVES[$shade], 170, BLEED);
  pad($x, $y, $radius, $notch);

//@ stems-off-the-paper
  // stems first, reaching down off the paper
  stemWash(STEM, 190);

//@ stems
  // stems first
  stemWash(STEM, 190);

//@ branch
  // the branch first
  stemWash(STEM, 190);

//@ branch-and-twig
  // the branch in two washes, and a twig off it
  stemWash(STEM, 215);

//@ band
  band($x1, $y1, $x2, $y2, $width, $bend);

//@ leaves-along-the-stem
  // leaves along the stem

//@ leaves-under-the-petals
  // leaves peeking out from under the petals

//@ leaves-on-the-branch
  // a few young leaves on the branch

//@ blade-leaves
  // long blade leaves from the ground

//@ sword-leaves
  // long sword leaves from the ground

//@ fresh-leaves
  // a couple of fresh leaves

//@ leaf
  leaf($x, $y, $angle, $length, $width);

//@ bud
  // a closed bud on its own stem
  bud($x, $y, $angle, $scale);

//@ one-bloom
  // the $noun

//@ several-blooms
  // the ${noun}s, the far one first

//@ bloom
  $call($x, $y, $scale, $turn);

//@ blossoms-along-the-branch
  // blossoms strung along the branch, each a little off it and turned its own way
  for (let i = 0; i < $count; i++) {
    const t = 0.2 + (0.75 * i) / $last;
    const x = lerp($x1, $x2, t) + random(-35, 35);
    const y = lerp($y1, $y2, t) + random(-35, 35);
    $call(x, y, random($smallest, $largest), random(TWO_PI));
  }

  // a few buds still closed
  wash(PETALS[PETALS.length - 1], OPACITY, BLEED * 0.5);
  for (let i = 0; i < $buds; i++) {
    const t = random(0.3, 1);
    const x = lerp($x1, $x2, t) + random(-30, 30);
    const y = lerp($y1, $y2, t) + random(-30, 30);
    brush.circle(x, y, random(6, 10), WOBBLE);
  }
