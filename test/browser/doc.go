// Package browser holds the headless-browser check of pel's HTML report: each golden report
// page is opened in Chromium, which must render it without console errors and show the
// verdict. The test skips, saying why, where no Chromium is installed.
package browser
