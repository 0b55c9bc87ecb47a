package spyder

// Version is spyder's version, as `spyder --version`, the default user
// agent and the ingest requests give it.
var Version = "0.1.0"

// ProjectURL is the address the default user agent points site owners to.
const ProjectURL = "https://github.com/spyder-crawler/spyder"
