// An async setup() that rejects after an await: line 5, column 9.
async function setup() {
  createCanvas(600, 600, WEBGL);
  await 0;
  throw new Error("painted myself into a corner");
}
