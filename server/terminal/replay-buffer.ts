/**
 * Bounded history of a terminal's output, addressed by byte offset from the start of the
 * terminal. Whole chunks are dropped from the front when the total exceeds the capacity, so a
 * chunk (one SSH read) is never cut; a reader whose offset fell off the front gets `null` and
 * must be sent a reset.
 */
export class ReplayBuffer {
  private chunks: Uint8Array[] = [];
  private startOffset = 0;
  private endOffset = 0;
  private size = 0;

  /** @param capacityBytes most bytes kept; the newest chunk is always kept whatever its size. */
  constructor(private readonly capacityBytes: number) {
    if (!(capacityBytes > 0)) throw new Error("ReplayBuffer capacity must be positive");
  }

  /** Offset of the oldest byte still held. */
  get start(): number {
    return this.startOffset;
  }

  /** Offset the next appended byte will get (= total bytes ever appended). */
  get end(): number {
    return this.endOffset;
  }

  get bytes(): number {
    return this.size;
  }

  /** Drops everything held; the next appended byte gets `offset` (output that continues elsewhere in the log). */
  rebase(offset: number): void {
    this.chunks = [];
    this.size = 0;
    this.startOffset = this.endOffset = offset;
  }

  /** Appends a chunk; returns the offset of its first byte. */
  append(chunk: Uint8Array): number {
    const offset = this.endOffset;
    if (chunk.byteLength === 0) return offset;
    this.chunks.push(chunk);
    this.size += chunk.byteLength;
    this.endOffset += chunk.byteLength;
    while (this.size > this.capacityBytes && this.chunks.length > 1) {
      const dropped = this.chunks.shift()!;
      this.size -= dropped.byteLength;
      this.startOffset += dropped.byteLength;
    }
    return offset;
  }

  /**
   * The bytes from `offset` to the end, as chunks (the first one possibly sliced), or null when
   * `offset` is older than the buffer or beyond its end.
   */
  since(offset: number): Uint8Array[] | null {
    if (offset < this.startOffset || offset > this.endOffset) return null;
    const out: Uint8Array[] = [];
    let at = this.startOffset;
    for (const chunk of this.chunks) {
      const next = at + chunk.byteLength;
      if (next > offset) out.push(at >= offset ? chunk : chunk.subarray(offset - at));
      at = next;
    }
    return out;
  }
}
