// Package archtest holds a test that enforces the import direction of the module:
// cmd → httpapi → services → store, services free of presentation, mock free of internal/.
package archtest
