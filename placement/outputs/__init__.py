"""What a results folder holds: GeoJSON, CSV, catchments, static and web maps, charts and reports."""
