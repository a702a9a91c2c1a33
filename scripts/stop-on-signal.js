// Shared by the launchers (scripts/start.js, scripts/start-distributed.js): on the first SIGINT or SIGTERM,
// stop the stack (apps in order, then their dependencies) and exit 0, or 1 if stopping failed.
module.exports = function stopOnSignal(stop) {
  let stopping = false;
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      console.log('stopping...');
      Promise.resolve()
        .then(stop)
        .then(
          () => process.exit(0),
          (err) => {
            console.error(err);
            process.exit(1);
          },
        );
    });
  }
};
