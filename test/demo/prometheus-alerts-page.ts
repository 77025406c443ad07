// Where the demo's Prometheus shows its alerts to a person. A Prometheus built with its React UI
// serves `/alerts`; Debian's package is built without the UI's npm assets (measured on
// 2.42.0+ds-5+deb12u1: `/alerts` answers 404, `/classic/alerts` 200), so the demo prints the first
// page that answers, and the API when neither does.
const PAGES = ["/alerts", "/classic/alerts"];

/** The first alerts page of `prometheusUrl` that answers 200, else its alerts API. */
export async function alertsPageUrl(prometheusUrl: string): Promise<string> {
  for (const path of PAGES) {
    try {
      const response = await fetch(`${prometheusUrl}${path}`, { redirect: "manual", signal: AbortSignal.timeout(2000) });
      await response.body?.cancel();
      if (response.status === 200) return `${prometheusUrl}${path}`;
    } catch {
      // Not this page: try the next.
    }
  }
  return `${prometheusUrl}/api/v1/alerts`;
}
