"""The pure domain core: attrs and the standard library only, synchronous, no I/O."""
