"""The window's panels; each takes events from the bridge and redraws once per frame."""
