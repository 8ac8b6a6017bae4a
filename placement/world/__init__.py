"""The bundled world, read and checked: the site catalog, cities, regions, geodesy, demand and time slices."""
