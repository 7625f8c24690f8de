mod site;
mod tools;
