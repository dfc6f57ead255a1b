/*
 * libtutti.so's own translation unit, empty on purpose: the library is the
 * whole of libtutti_core (every core source, see core/Makefile.inc), linked
 * in by libtool, and core/libtutti.map chooses what it exports.
 */
