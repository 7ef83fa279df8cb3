/**
 * Bounded history of a terminal's output, addressed by byte offset from the start of the
 * terminal. Whole chunks are dropped from the front when the total exceeds the capacity, so a
 * chunk (one SSH read) is never cut; a reader whose offset fell off the front gets `null` and
 * must be sent a reset.
 */
export class ReplayBuffer {
  private chunks: Uint8Array[] = [];
  private oldestOffset = 0;
  private nextOffset = 0;
  private size = 0;

  /** @param capacityBytes most bytes kept; the newest chunk is always kept whatever its size. */
  constructor(private readonly capacityBytes: number) {
    if (!(capacityBytes > 0)) throw new Error("ReplayBuffer capacity must be positive");
  }

  /** Offset of the oldest byte still held. */
  get startOffset(): number {
    return this.oldestOffset;
  }

  /** Offset the next appended byte will get (right after the last byte held). */
  get endOffset(): number {
    return this.nextOffset;
  }

  get bytes(): number {
    return this.size;
  }

  /** Drops everything held; the next appended byte gets `offset` (output that continues elsewhere in the log). */
  rebase(offset: number): void {
    this.chunks = [];
    this.size = 0;
    this.oldestOffset = this.nextOffset = offset;
  }

  /** Appends a chunk; returns the offset of its first byte. */
  append(chunk: Uint8Array): number {
    const offset = this.nextOffset;
    if (chunk.byteLength === 0) return offset;
    this.chunks.push(chunk);
    this.size += chunk.byteLength;
    this.nextOffset += chunk.byteLength;
    while (this.size > this.capacityBytes && this.chunks.length > 1) {
      const dropped = this.chunks.shift()!;
      this.size -= dropped.byteLength;
      this.oldestOffset += dropped.byteLength;
    }
    return offset;
  }

  /**
   * The bytes from `offset` to the end, as chunks (the first one possibly sliced), or null when
   * `offset` is older than the buffer or beyond its end.
   */
  since(offset: number): Uint8Array[] | null {
    if (offset < this.oldestOffset || offset > this.nextOffset) return null;
    const out: Uint8Array[] = [];
    let chunkOffset = this.oldestOffset;
    for (const chunk of this.chunks) {
      const afterOffset = chunkOffset + chunk.byteLength;
      if (afterOffset > offset) out.push(chunkOffset >= offset ? chunk : chunk.subarray(offset - chunkOffset));
      chunkOffset = afterOffset;
    }
    return out;
  }
}
