// poll.ts - a page's refresh that never overlaps itself: the next run is
// scheduled a period after the last one finished (not started), so a slow
// answer delays the next question instead of racing it.  The function
// returns false when there is nothing more to follow; an error it throws
// (it catches all but a 401, which the shell handles) stops the polling
// too.  now() runs it at once, or once more right after the run in flight.
export interface Poller {
  now(): Promise<void>;
  stop(): void;
}

export function poller(fn: () => Promise<boolean | void>, ms: number): Poller {
  let timer = 0;
  let stopped = false;
  let inflight: Promise<void> | null = null;
  let again = false;
  const run = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    if (inflight) {
      again = true;
      return inflight;
    }
    window.clearTimeout(timer);
    const p = (async () => {
      let more = false;
      try {
        more = (await fn()) !== false;
      } finally {
        inflight = null;
        if (!stopped && (more || again)) timer = window.setTimeout(run, again ? 0 : ms);
        again = false;
      }
    })();
    inflight = p;
    return p;
  };
  run();
  return {
    now: run,
    stop: () => {
      stopped = true;
      window.clearTimeout(timer);
    },
  };
}
