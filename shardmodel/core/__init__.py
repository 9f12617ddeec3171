"""The lowest floor: time, canonical values and the shared worker threads."""
