/**
 * Lesson links to a lab machine's web service: a lesson (or step) writes the address the learner
 * would use inside the lab, `[nginx](http://node01:30080/)`, and the lab page turns it into a
 * link through the web preview (server/preview/) to that machine of the learner's own session.
 * Only `http://<a machine of this lab>[:port]/…` is taken; anything else stays an ordinary link.
 */
export interface PreviewLinkTarget {
  machine: string;
  port: number;
  /** Path and query, as the link has them. */
  path: string;
}

export function previewLinkTarget(href: string | undefined, machines: readonly string[]): PreviewLinkTarget | null {
  if (!href || !/^http:\/\//i.test(href)) return null;
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return null;
  }
  if (url.username || url.password || !machines.includes(url.hostname)) return null;
  return { machine: url.hostname, port: url.port ? Number(url.port) : 80, path: `${url.pathname}${url.search}` };
}
