//! The one macro that stamps out tuple impls (arity 0 to 16) for query
//! data and filters. Each element comes as (type, fetch name, state name).

macro_rules! all_query_tuples {
    ($m:ident) => {
        $m!();
        $m!((Q0, f0, s0));
        $m!((Q0, f0, s0), (Q1, f1, s1));
        $m!((Q0, f0, s0), (Q1, f1, s1), (Q2, f2, s2));
        $m!((Q0, f0, s0), (Q1, f1, s1), (Q2, f2, s2), (Q3, f3, s3));
        $m!(
            (Q0, f0, s0),
            (Q1, f1, s1),
            (Q2, f2, s2),
            (Q3, f3, s3),
            (Q4, f4, s4)
        );
        $m!(
            (Q0, f0, s0),
            (Q1, f1, s1),
            (Q2, f2, s2),
            (Q3, f3, s3),
            (Q4, f4, s4),
            (Q5, f5, s5)
        );
        $m!(
            (Q0, f0, s0),
            (Q1, f1, s1),
            (Q2, f2, s2),
            (Q3, f3, s3),
            (Q4, f4, s4),
            (Q5, f5, s5),
            (Q6, f6, s6)
        );
        $m!(
            (Q0, f0, s0),
            (Q1, f1, s1),
            (Q2, f2, s2),
            (Q3, f3, s3),
            (Q4, f4, s4),
            (Q5, f5, s5),
            (Q6, f6, s6),
            (Q7, f7, s7)
        );
        $m!(
            (Q0, f0, s0),
            (Q1, f1, s1),
            (Q2, f2, s2),
            (Q3, f3, s3),
            (Q4, f4, s4),
            (Q5, f5, s5),
            (Q6, f6, s6),
            (Q7, f7, s7),
            (Q8, f8, s8)
        );
        $m!(
            (Q0, f0, s0),
            (Q1, f1, s1),
            (Q2, f2, s2),
            (Q3, f3, s3),
            (Q4, f4, s4),
            (Q5, f5, s5),
            (Q6, f6, s6),
            (Q7, f7, s7),
            (Q8, f8, s8),
            (Q9, f9, s9)
        );
        $m!(
            (Q0, f0, s0),
            (Q1, f1, s1),
            (Q2, f2, s2),
            (Q3, f3, s3),
            (Q4, f4, s4),
            (Q5, f5, s5),
            (Q6, f6, s6),
            (Q7, f7, s7),
            (Q8, f8, s8),
            (Q9, f9, s9),
            (Q10, f10, s10)
        );
        $m!(
            (Q0, f0, s0),
            (Q1, f1, s1),
            (Q2, f2, s2),
            (Q3, f3, s3),
            (Q4, f4, s4),
            (Q5, f5, s5),
            (Q6, f6, s6),
            (Q7, f7, s7),
            (Q8, f8, s8),
            (Q9, f9, s9),
            (Q10, f10, s10),
            (Q11, f11, s11)
        );
        $m!(
            (Q0, f0, s0),
            (Q1, f1, s1),
            (Q2, f2, s2),
            (Q3, f3, s3),
            (Q4, f4, s4),
            (Q5, f5, s5),
            (Q6, f6, s6),
            (Q7, f7, s7),
            (Q8, f8, s8),
            (Q9, f9, s9),
            (Q10, f10, s10),
            (Q11, f11, s11),
            (Q12, f12, s12)
        );
        $m!(
            (Q0, f0, s0),
            (Q1, f1, s1),
            (Q2, f2, s2),
            (Q3, f3, s3),
            (Q4, f4, s4),
            (Q5, f5, s5),
            (Q6, f6, s6),
            (Q7, f7, s7),
            (Q8, f8, s8),
            (Q9, f9, s9),
            (Q10, f10, s10),
            (Q11, f11, s11),
            (Q12, f12, s12),
            (Q13, f13, s13)
        );
        $m!(
            (Q0, f0, s0),
            (Q1, f1, s1),
            (Q2, f2, s2),
            (Q3, f3, s3),
            (Q4, f4, s4),
            (Q5, f5, s5),
            (Q6, f6, s6),
            (Q7, f7, s7),
            (Q8, f8, s8),
            (Q9, f9, s9),
            (Q10, f10, s10),
            (Q11, f11, s11),
            (Q12, f12, s12),
            (Q13, f13, s13),
            (Q14, f14, s14)
        );
        $m!(
            (Q0, f0, s0),
            (Q1, f1, s1),
            (Q2, f2, s2),
            (Q3, f3, s3),
            (Q4, f4, s4),
            (Q5, f5, s5),
            (Q6, f6, s6),
            (Q7, f7, s7),
            (Q8, f8, s8),
            (Q9, f9, s9),
            (Q10, f10, s10),
            (Q11, f11, s11),
            (Q12, f12, s12),
            (Q13, f13, s13),
            (Q14, f14, s14),
            (Q15, f15, s15)
        );
    };
}
pub(crate) use all_query_tuples;
