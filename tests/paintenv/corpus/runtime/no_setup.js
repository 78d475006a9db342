// Defines no setup() and no draw(): nothing to run.
const palette = ["#5f8f4e"];
