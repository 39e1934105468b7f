"""The numexpr release whose API and behaviour jitexpr.numexpr follows."""
version = "2.14.2"
