// Package browsertest drives the web console (internal/httpapi/console) in
// Debian's headless Chromium against a real `runstream dev` process. It is
// a module of its own so that the browser driver (chromedp) stays out of
// runstream's main module: `make test` runs it (scripts/test.sh) with a
// replace directive pointing at this checkout.
package browsertest
