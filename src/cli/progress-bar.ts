import { MultiBar, Presets, type SingleBar } from 'cli-progress';
import { formatDuration, type ProgressSnapshot, type ProgressTracker } from '../sync/progress.ts';

// The progress bar of a long command on a terminal (stderr, where the logs go too). Whatever is
// written to stderr while it shows (log lines, the notice of a stop, a library's warning) goes
// through it: cli-progress prints it above the bar at its next redraw, so no line lands in the
// middle of the bar's, to be wiped by the redraw after.

const REDRAW_MS = 200;

export class TerminalProgress {
  private shown = 0;

  constructor(private readonly stream: NodeJS.WriteStream = process.stderr) {}

  /** Whether a bar shows now. */
  get showing(): boolean {
    return this.shown > 0;
  }

  /** Progress lines say what the bar shows: while it shows, they are left out. */
  readonly leaveOut = (message: string, level: number): boolean =>
    this.showing && level <= 30 && / progress$|^\w+: [\d,]+ runs listed/.test(message);

  /** Where the logger writes: above the bar while one shows, else straight to the terminal. */
  readonly logSink = {
    write: (line: string): void => {
      this.stream.write(line);
    },
  };

  /** Shows the tracker's progress until the returned function is called. */
  show(tracker: ProgressTracker): () => void {
    const stream = this.stream;
    const write = stream.write;
    // The bar draws through the stream's own write; everyone else's writes are held above it.
    const own = {
      isTTY: true,
      get columns() {
        return stream.columns;
      },
      write: write.bind(stream),
    } as unknown as NodeJS.WriteStream;
    const multibar = new MultiBar(
      {
        stream: own,
        format: '{what} [{bar}] {text}',
        hideCursor: true,
        clearOnComplete: true,
        gracefulExit: false,
        barsize: 20,
        fps: 5,
      },
      Presets.shades_classic,
    );
    this.shown++;
    stream.write = ((chunk: string | Uint8Array) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      multibar.log(text.endsWith('\n') ? text : `${text}\n`);
      return true;
    }) as typeof stream.write;
    const first = tracker.snapshot();
    const bar: SingleBar = multibar.create(Math.max(1, first.toFetch), first.fetched, payload(first));
    const timer = setInterval(() => {
      const p = tracker.snapshot();
      bar.setTotal(Math.max(1, p.toFetch));
      bar.update(p.fetched, payload(p));
    }, REDRAW_MS);
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      // A last redraw writes out the log lines still held, then the bar goes.
      multibar.update();
      multibar.stop();
      stream.write = write;
      this.shown--;
    };
  }
}

/** The bar's words: details fetched, runs listed, the slice under way, the rate and the time left. */
export function payload(p: ProgressSnapshot): { what: string; text: string } {
  const parts = [`${p.fetched}/${p.toFetch} details`, `${p.listed} listed`];
  // The slice under way, counted from 1; the last once all are done.
  if (p.slices && p.slices.total > 1)
    parts.push(`slice ${Math.min(p.slices.done + 1, p.slices.total)} of ${p.slices.total}`);
  if (p.ratePerSecond !== null) parts.push(`${p.ratePerSecond.toFixed(1)}/s`);
  parts.push(p.etaMs !== null ? `ETA ${formatDuration(p.etaMs)}` : p.listing ? 'listing…' : 'ETA unknown');
  return { what: p.what, text: parts.join(' · ') };
}
