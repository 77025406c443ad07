// Debian's Chromium as the browser tests, the screenshot and the page bench drive it through
// playwright-core (no browser download; `make test-deps` installs the package).
export const CHROMIUM = "/usr/bin/chromium";
/** Headless, and nothing of its own on the network (no QUIC, sync, updates or background fetches). */
export const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
/** What to say when it is not installed. */
export const CHROMIUM_MISSING = `${CHROMIUM} is missing: run \`make test-deps\` (installs Debian chromium)`;
