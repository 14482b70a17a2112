// Package report renders an evidence package for people and machines: terminal text (the
// verdict first, then the evidence, then per-stage tables), JSON (the evidence itself), and
// one self-contained HTML file with inline SVG charts.
//
// Renderers compute nothing: every number they show comes from the evidence. Anything a
// chart needs (histograms, time series, per-band summaries) is produced upstream by the
// runner, the collectors or diagnose, and this package only lays it out.
package report
