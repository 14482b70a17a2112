// Package browser holds the headless-browser check of pel's HTML pages: each golden report
// page is opened in Chromium, which must render it without console errors and show the
// verdict and the summary strip above the stage tables; each golden sweep page must show the
// capacity at the SLO and its four curves with the knee and the capacity marked. The tests
// skip, saying why, where no Chromium is installed.
package browser
