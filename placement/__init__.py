"""placement: where LLM inference capacity should live, at the lowest cost per million goodput tokens."""

from placement.optimize.facility_location import FacilityLocationResult, facility_location

__all__ = ["FacilityLocationResult", "facility_location"]
__version__ = "0.1.0"
