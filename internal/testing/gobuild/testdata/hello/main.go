// Command hello prints hello: gobuild's test builds it.
package main

import "fmt"

func main() { fmt.Println("hello") }
