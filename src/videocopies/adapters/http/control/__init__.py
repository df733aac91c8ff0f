"""The control panel: server-rendered HTML pages over the control read model."""
