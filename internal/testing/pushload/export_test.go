package pushload

// DecodePush is decodePush for the tests.
var DecodePush = decodePush
