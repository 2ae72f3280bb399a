// Command app is the product team's backend: the HTTP API, operator commands and a mock server.
package main

func main() {}
