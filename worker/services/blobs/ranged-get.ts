/**
 * An R2 object's bytes as a stream that reads one range at a time, and the next only when its
 * reader asks for more. `object.body` streams too, but how far ahead it reads is the store's
 * business: local R2 (miniflare) pushed a 512 MB object into workerd's memory for a reader taking
 * 40 MB/s. Read by ranges, a backup read back for a slow reader (an agent feeding a test-restore,
 * a user's download) holds one range at most, whatever the store does. Each range is one R2 read
 * (128 for a 1 GB archive), all pinned to the object's etag, so a replaced object is an error
 * rather than a mix of two.
 */

export const RANGE_BYTES = 8 * 1024 * 1024;

export function rangedBody(
  bucket: R2Bucket,
  object: { key: string; size: number; etag: string },
  rangeBytes = RANGE_BYTES,
): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (offset >= object.size) {
          controller.close();
          return;
        }
        const length = Math.min(rangeBytes, object.size - offset);
        const part = await bucket.get(object.key, {
          range: { offset, length },
          onlyIf: { etagMatches: object.etag },
        });
        if (!part || !("arrayBuffer" in part)) {
          controller.error(new Error(`${object.key} changed or went away while it was read`));
          return;
        }
        const bytes = new Uint8Array(await part.arrayBuffer());
        if (bytes.byteLength !== length) {
          controller.error(
            new Error(`${object.key}: ${bytes.byteLength} bytes at ${offset}, ${length} asked`),
          );
          return;
        }
        offset += length;
        controller.enqueue(bytes);
      },
    },
    { highWaterMark: 0 },
  );
}
