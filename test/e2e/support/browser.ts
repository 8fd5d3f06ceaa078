import { type Browser, chromium } from "playwright-core";

/**
 * Debian's Chromium (installed by scripts/host/ensure-browser.sh), headless, driven by
 * playwright-core: nothing downloads a browser of its own here.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    // Flags that keep Chromium from dialling out on a machine with no network.
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
