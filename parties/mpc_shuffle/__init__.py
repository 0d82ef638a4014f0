"""The MPC secret-shared shuffler's parties: MPyC runtime, wire format, shuffle servers, run plan."""
