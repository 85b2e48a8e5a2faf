package etl

// CopyMinRows is copyMinRows, for tests that need the COPY path.
const CopyMinRows = copyMinRows
