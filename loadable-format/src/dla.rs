//! DLA1 descriptors (`dla_interface.h`). Being written.
