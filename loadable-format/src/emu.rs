//! EMU1 descriptors (`emu_interface.h`). Being written.
