mod confine;
mod owner;
