/**
 * What a terminal's connector hands a recorder (server/recordings/recorder.ts implements it): the
 * holder log's output with its log offsets, resizes, the notices viewers were shown, and a way to
 * read what no process read.
 */
import type { TerminalNotice } from "./protocol";

/** Reads the holder's log of a terminal from `logOffset` up to its end when asked, handing each piece to `sink`. */
export type LogReader = (logOffset: number, sink: (logOffset: number, data: Buffer) => void) => Promise<void>;

/** What the connector calls for one terminal. */
export interface RecordingTap {
  /** `bootId` names the holder log's epoch (the connector gives boot id and holder instance): log offsets restart with it. */
  output(bootId: string, logOffset: number, data: Buffer): void;
  resize(cols: number, rows: number): void;
  /**
   * A line the terminal showed its viewers between two pieces of output (rebooted, reconnected,
   * …): recorded right before the next output byte, and written with that byte, so of several
   * processes only the one that records the byte records the line.
   */
  notice(notice: TerminalNotice): void;
  /**
   * Called on attaching, before the live read starts: if the recording of this epoch ends before
   * what the holder holds, `read` fills it from there. Live output is held until it is done.
   */
  catchUp(bootId: string, read: LogReader): void;
}
