"""The product's equation and a site's footprint: all-in cost per hour, energy, carbon and water."""
