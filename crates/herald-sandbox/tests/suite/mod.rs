mod confine;
