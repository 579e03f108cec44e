// STYLE: Node warnings fail the run (unhandled rejections already do, in vitest).
process.on('warning', (warning) => {
  throw warning;
});
