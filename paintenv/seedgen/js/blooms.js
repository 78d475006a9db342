// The function that paints one bloom, per flower family. Families that share a shape share
// a section; `$call` is the family's own name for the function.
// Each section runs from its `//@ name` line to the next one.

//@ hibiscus
// one hibiscus on (cx, cy): `s` scales it and `turn` rotates it
function $call(cx, cy, s, turn) {
  // broad overlapping petals, each glazed once per colour, shrinking toward the throat
  for (let i = 0; i < PETAL_COUNT; i++) {
    const angle = turn + (TWO_PI * i) / PETAL_COUNT + random(-0.08, 0.08);
    for (let k = 0; k < PETALS.length; k++) {
      wash(PETALS[k], OPACITY, BLEED / (k + 1));
      fan(cx, cy, angle + k * 0.04, PETAL_LENGTH * s * (1 - k * 0.12), SPREAD * (1 - k * 0.08));
    }
  }
  // the throat: a dark heart and a star bleeding into every petal, built up in two washes
  for (let k = 0; k < 2; k++) {
    const reach = PETAL_LENGTH * s * THROAT * (1 - k * 0.3);
    wash(CENTRE, 180, BLEED * (0.8 - k * 0.4));
    brush.circle(cx, cy, reach * 0.45, WOBBLE);
    for (let i = 0; i < PETAL_COUNT; i++) {
      fan(cx, cy, turn + (TWO_PI * i) / PETAL_COUNT, reach, SPREAD * 0.7);
    }
  }
  // the stamen column, pollen near its tip and the stigma dots at the very end
  const tipX = cx + cos(COLUMN_ANGLE) * COLUMN_LENGTH * s;
  const tipY = cy + sin(COLUMN_ANGLE) * COLUMN_LENGTH * s;
  for (let k = 0; k < 2; k++) {
    stemWash(COLUMN, 220);
    band(cx, cy, tipX, tipY, (12 - k * 4) * s, 6 * s);
  }
  wash(DOTS, 245, BLEED * 0.15);
  dots(tipX - cos(COLUMN_ANGLE) * 20 * s, tipY - sin(COLUMN_ANGLE) * 20 * s, 26 * s, 18, 5.5 * s);
  wash(CENTRE, 235, BLEED * 0.15);
  ring(tipX, tipY, 8 * s, 5, 4.5 * s);
}

//@ rose
// one rose on (cx, cy): guard petals, then a spiral of cupped petals closing inward
function $call(cx, cy, s, turn) {
  for (let i = 0; i < GUARDS; i++) {
    const angle = turn + (TWO_PI * i) / GUARDS;
    for (let k = 0; k < PETALS.length; k++) {
      wash(PETALS[k], OPACITY, BLEED / (k + 1));
      lobe(cx, cy, angle + k * 0.05, BLOOM_SIZE * s * (1 - k * 0.12), BLOOM_SIZE * s, 0.25);
    }
  }
  // each cupped petal smaller and deeper than the last, turned by the golden angle
  for (let j = 0; j < SPIRAL; j++) {
    const t = j / SPIRAL;
    const k = min(floor(t * PETALS.length), PETALS.length - 1);
    wash(PETALS[k], OPACITY, BLEED * (0.8 - t * 0.5));
    cup(cx, cy, turn + j * 2.4, BLOOM_SIZE * s * (0.78 - 0.62 * t), 2.3 - t * 0.7, 0.45);
  }
  // the dark heart, two washes deep
  for (let k = 0; k < 2; k++) {
    wash(CENTRE, 210, BLEED * 0.3);
    brush.circle(cx, cy, BLOOM_SIZE * s * (0.12 - k * 0.04), WOBBLE);
  }
}

//@ camellia
// one $call on (cx, cy): rings of rounded petals, each ring shorter, then the stamens
function $call(cx, cy, s, turn) {
  for (let r = 0; r < RINGS; r++) {
    const count = PETAL_COUNT - r;
    const length = PETAL_LENGTH * s * (1 - r * 0.24);
    for (let i = 0; i < count; i++) {
      const angle = turn + (TWO_PI * (i + r * 0.5)) / count + random(-0.1, 0.1);
      for (let k = 0; k < PETALS.length; k++) {
        wash(PETALS[k], OPACITY, BLEED / (k + 1));
        lobe(cx, cy, angle + k * 0.05, length * (1 - k * 0.12), length * WIDTH, CRINKLE);
      }
    }
  }
  // a tuft of stamens in the middle
  wash(CENTRE, 210, BLEED * 0.3);
  dots(cx, cy, 22 * s, 18, 5 * s);
  wash(DOTS, 225, BLEED * 0.15);
  ring(cx, cy, 26 * s, 9, 3 * s);
}

//@ poppy
// one $call on (cx, cy): broad crinkled petals round a dark centre
function $call(cx, cy, s, turn) {
  for (let i = 0; i < PETAL_COUNT; i++) {
    const angle = turn + (TWO_PI * i) / PETAL_COUNT + random(-0.12, 0.12);
    for (let k = 0; k < PETALS.length; k++) {
      wash(PETALS[k], OPACITY, BLEED / (k + 1));
      lobe(cx, cy, angle + k * 0.06, PETAL_LENGTH * s * (1 - k * 0.12),
        PETAL_LENGTH * s * WIDTH, CRINKLE);
    }
  }
  // the dark blotch built up in three washes, then a ring of stamens and the seed head
  for (let k = 0; k < 3; k++) {
    wash(CENTRE, 220, (BLEED * 0.5) / (k + 1));
    brush.circle(cx, cy, HEART * s * (1 - k * 0.2), WOBBLE);
  }
  wash(DOTS, 240, BLEED * 0.15);
  ring(cx, cy, HEART * s * 1.2, 14, 4.5 * s);
  wash(POD, 210, BLEED * 0.2);
  brush.circle(cx, cy, HEART * s * 0.45, WOBBLE);
}

//@ rays
// one $call on (cx, cy): two rows of ray petals round a seeded disc
function $call(cx, cy, s, turn) {
  for (let row = 0; row < 2; row++) {
    for (let i = 0; i < RAYS; i++) {
      const angle = turn + (TWO_PI * (i + row * 0.5)) / RAYS + random(-0.05, 0.05);
      const foot = DISC * s * 0.75;
      wash(PETALS[(i + row) % PETALS.length], OPACITY, BLEED);
      almond(cx + cos(angle) * foot, cy + sin(angle) * foot, angle,
        RAY_LENGTH * s * random(0.85, 1.05) * (1 - row * 0.12), RAY_WIDTH * s);
    }
  }
  // the disc built up in two washes, then its seeds on a golden-angle spiral
  for (let k = 0; k < 2; k++) {
    wash(CENTRE, 215, (BLEED * 0.5) / (k + 1));
    brush.circle(cx, cy, DISC * s * (1 - k * 0.25), WOBBLE);
  }
  wash(DOTS, 240, BLEED * 0.15);
  dots(cx, cy, DISC * s * 0.8, SEEDS, 3.5 * s);
}

//@ water-lily
// one water lily on (cx, cy), seen at a slant: TILT squashes the far and near petals
function $call(cx, cy, s, turn) {
  for (let r = 0; r < 2; r++) {
    for (let i = 0; i < PETAL_COUNT; i++) {
      const a = turn + (TWO_PI * (i + r * 0.5)) / PETAL_COUNT;
      const dx = cos(a);
      const dy = sin(a) * TILT;
      const length = PETAL_LENGTH * s * (1 - r * 0.3) * sqrt(dx * dx + dy * dy);
      wash(PETALS[(i + r) % PETALS.length], OPACITY, BLEED);
      almond(cx, cy, atan2(dy, dx), length, PETAL_WIDTH * s * (1 - r * 0.2));
    }
  }
  // the golden heart
  wash(CENTRE, 215, BLEED * 0.4);
  brush.circle(cx, cy, 16 * s, WOBBLE);
  wash(DOTS, 225, BLEED * 0.15);
  dots(cx, cy - 4 * s, 20 * s, 14, 3 * s);
}

//@ tulip
// one tulip whose cup sits on (x, y): back petals first, then the front ones
function $call(x, y, s, lean) {
  const h = CUP_HEIGHT * s;
  const w = CUP_WIDTH * s;
  for (let i = 0; i < BACK; i++) {
    const dx = (i - (BACK - 1) / 2) * w * 0.4;
    for (let k = 0; k < PETALS.length; k++) {
      wash(PETALS[k], OPACITY, BLEED / (k + 1));
      upright(x + dx, y, lean + dx * 0.4, h * (1 - k * 0.15), w * 0.6);
    }
  }
  // front petals overlap in the middle; the deepest wash stays low in the cup
  for (let i = 0; i < FRONT; i++) {
    const dx = (i - (FRONT - 1) / 2) * w * 0.32;
    for (let k = 0; k < PETALS.length; k++) {
      wash(PETALS[k], OPACITY, BLEED / (k + 1));
      upright(x + dx, y + 6 * s, lean + dx * 0.2, h * 0.9 * (1 - k * 0.18), w * 0.62);
    }
  }
  // a shadow where the cup meets the stem
  wash(CENTRE, 170, BLEED * 0.5);
  upright(x, y + 8 * s, lean * 0.2, h * 0.22, w * 0.5);
}

//@ magnolia
// one magnolia whose goblet sits on (x, y): tepals fan out from the base
function $call(x, y, s, lean) {
  for (let i = 0; i < TEPALS; i++) {
    const side = (i - (TEPALS - 1) / 2) / TEPALS;
    for (let k = 0; k < PETALS.length; k++) {
      wash(PETALS[k], OPACITY, BLEED / (k + 1));
      upright(x + side * 40 * s, y, lean + side * OPEN * s,
        TEPAL_HEIGHT * s * (1 - k * 0.2), TEPAL_WIDTH * s);
    }
  }
  // the flush of colour at the base of the goblet
  wash(CENTRE, 165, BLEED * 0.6);
  upright(x, y + 4 * s, lean * 0.1, TEPAL_HEIGHT * s * 0.3, TEPAL_WIDTH * s * 1.2);
}

//@ iris
// one iris on (cx, cy): standards up behind, falls hanging down in front
function $call(cx, cy, s, lean) {
  for (let i = -1; i <= 1; i++) {
    const angle = -HALF_PI + i * 0.55 + lean * 0.004;
    for (let k = 0; k < PETALS.length; k++) {
      wash(PETALS[k], OPACITY, BLEED / (k + 1));
      lobe(cx, cy, angle, STANDARD * s * (1 - k * 0.12), STANDARD * s * 0.55, 0.3);
    }
  }
  // the falls: the two side ones first, the front one last
  const falls = [HALF_PI - 1.05, HALF_PI + 1.05, HALF_PI];
  for (const angle of falls) {
    for (let k = 0; k < PETALS.length; k++) {
      wash(PETALS[PETALS.length - 1 - k], OPACITY, BLEED / (k + 1));
      lobe(cx, cy + 8 * s, angle, FALL * s * (1 - k * 0.1), FALL * s * 0.72, 0.35);
    }
    // the beard
    wash(CENTRE, 215, BLEED * 0.2);
    almond(cx, cy + 8 * s, angle, FALL * s * 0.45, 12 * s);
  }
}

//@ lotus
// one lotus rising from (x, y): a wide back row, then a tighter front row
function $call(x, y, s, lean) {
  for (let i = 0; i < BACK; i++) {
    const angle = -HALF_PI + (i - (BACK - 1) / 2) * 0.42 + lean * 0.003;
    for (let k = 0; k < PETALS.length; k++) {
      wash(PETALS[k], OPACITY, BLEED / (k + 1));
      almond(x, y, angle, PETAL_LENGTH * s * (1 - k * 0.14), PETAL_WIDTH * s);
    }
  }
  // the seed head peeks out between the rows
  wash(CENTRE, 210, BLEED * 0.3);
  dots(x, y - PETAL_LENGTH * s * 0.35, 16 * s, 10, 4 * s);
  for (let i = 0; i < FRONT; i++) {
    const angle = -HALF_PI + (i - (FRONT - 1) / 2) * 0.55 + lean * 0.003;
    for (let k = 0; k < PETALS.length; k++) {
      wash(PETALS[max(k - 1, 0)], OPACITY, BLEED / (k + 1));
      almond(x, y + 12 * s, angle, PETAL_LENGTH * s * 0.82 * (1 - k * 0.14), PETAL_WIDTH * s * 1.1);
    }
  }
}

//@ blossom
// one blossom on (cx, cy): five small petals round a pink eye with stamens
function $call(cx, cy, s, turn) {
  for (let i = 0; i < 5; i++) {
    const angle = turn + (TWO_PI * i) / 5;
    for (let k = 0; k < PETALS.length; k++) {
      wash(PETALS[k], OPACITY, BLEED / (k + 1));
      lobe(cx, cy, angle, BLOSSOM * s * (1 - k * 0.15), BLOSSOM * s * 0.9, 0.5);
    }
  }
  wash(CENTRE, 190, BLEED * 0.3);
  brush.circle(cx, cy, BLOSSOM * s * 0.18, WOBBLE);
  wash(DOTS, 225, BLEED * 0.1);
  ring(cx, cy, BLOSSOM * s * 0.4, 7, 2 * s);
}
