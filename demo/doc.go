// Package demo runs the whole ladder against pel's simulated engine: it starts a scenario's
// server on loopback, drives the scenario's workload contract through the runner with the
// engine's /metrics and the virtual GPU's DCGM page sampled (and a profiler trace captured
// when the scenario needs one), diagnoses the evidence, and writes the run directory with
// evidence.json and report.html.
//
// The diagnosis sees only what a real deployment would expose (HTTP responses, /metrics,
// DCGM, a Kineto trace); the scenario's owner layer is recorded in the evidence for the
// reader and the tests, never read by diagnose.
package demo
