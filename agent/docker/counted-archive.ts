import { pipeline, type Readable, Transform } from "node:stream";

/**
 * An archive the engine serves (`getArchive`), passed on with its bytes counted. The engine holds the
 * container's lock until such an archive is read to its end or closed. So when the reader stops
 * early (an upload cut by the control plane's restart), the archive is closed with it: left open, it
 * held the lock for the agent's life, and the next archive of the container (the step's rerun, a
 * backup) waited for it until its command timed out.
 */
export function countedArchive(archive: Readable): { stream: Readable; bytes: () => number } {
  let bytes = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  // not `pipe`: a failure or an early close of either side destroys the other
  pipeline(archive, counted, () => undefined);
  return { stream: counted, bytes: () => bytes };
}
